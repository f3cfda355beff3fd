import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((-a) == -7, (-a), -7) * (((a ^ a) ^ (b & b)) - (b & (a + a))))
        t1 = a
        if t0 >= t0:
            t1 = 3
        t2 = a
        if b >= t0:
            t2 = (t1 - 3)
        t3 = t2
        if t2 >= t2:
            t3 = (t0 & 100)
        t4 = t2
        if t2 >= t1:
            t4 = -7
        pto.store(o + i, t4)
