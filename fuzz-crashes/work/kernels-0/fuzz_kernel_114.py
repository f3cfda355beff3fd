import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(3 <= b, 3, b) * a)
        t1 = ((b & a) + ((b ^ (-7 & b)) - ((1 & -7) & (b | b))))
        t2 = b
        if a >= t1:
            t2 = 1
        t3 = t0
        if b < t0:
            t3 = (a ^ (100 | pto.select(1 >= (t2 + t0), 1, (t2 + t0))))
        t4 = a
        if t2 >= b:
            t4 = (t3 - (((t0 + t0) ^ t2) - (t0 - (t3 & 100))))
        t5 = 100
        pto.store(o + i, t5)
