import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((pto.select(pto.select(b >= a, b, a) > (a * b), pto.select(b >= a, b, a), (a * b)) & ((a - a) * b)) ^ (b | 3))
        t1 = a
        if t0 >= a:
            t1 = ((((t0 + -7) * (t0 & t0)) * t0) | ((-7 * (-7 ^ a)) - b))
        t2 = (((3 & (t0 & t0)) + t0) - a)
        t3 = t1
        if b < t0:
            t3 = pto.select(100 < (-(a - pto.select(t0 > t0, t0, t0))), 100, (-(a - pto.select(t0 > t0, t0, t0))))
        t4 = ((a & (pto.select(t2 == b, t2, b) | a)) * t0)
        t5 = pto.select(-7 < (t0 ^ (-100)), -7, (t0 ^ (-100)))
        acc2 = t5
        for j in range(i % 5, 5):
            acc2 = acc2 + t5
        while a < b:
            pass
        else:
            pass
        pto.store(o + i, acc2)
