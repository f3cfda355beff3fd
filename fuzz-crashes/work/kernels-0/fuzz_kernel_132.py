import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (t0 + (t0 - pto.select(pto.select(0.25 >= 2.0, 0.25, 2.0) >= b, pto.select(0.25 >= 2.0, 0.25, 2.0), b)))
        t2 = ((pto.select((a * 0.25) <= pto.select(b <= t0, b, t0), (a * 0.25), pto.select(b <= t0, b, t0)) * (t1 * t1)) + t1)
        t3 = (-(t1 + ((a + b) - t2)))
        t4 = t3
        if t2 >= t1:
            t4 = (-(((-t0) * (-0.25)) + t2))
        pto.store(o + i, t4)
