import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 100
        t1 = a
        if t0 < a:
            t1 = ((--7) | t0)
        t2 = ((((t0 - b) | pto.select(t0 != a, t0, a)) + ((-t1) * (a & -7))) + ((a * (-7 * a)) - pto.select((b ^ t0) < (1 - b), (b ^ t0), (1 - b))))
        t3 = t2
        if a >= a:
            t3 = (a - 3)
        t4 = t3
        if t0 >= t2:
            t4 = (((-(-a)) ^ t2) & (t0 ^ (-(b - t1))))
        t5 = ((-(pto.select(b == t2, b, t2) & (b & t1))) - (pto.select((t2 ^ t4) <= a, (t2 ^ t4), a) & ((-b) & (t1 * 100))))
        pto.store(o + i, t5)
