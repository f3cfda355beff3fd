import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(b != b, b, b)
        t1 = b
        if t0 >= a:
            t1 = (t0 - (a & (-(t0 ^ a))))
        t2 = t1
        if a >= a:
            t2 = t1
        pto.store(o + i, t2)
