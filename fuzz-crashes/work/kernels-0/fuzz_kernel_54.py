import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((pto.select(2.0 > 1.5, 2.0, 1.5) - pto.select(a <= 2.0, a, 2.0)) <= ((1.5 * 0.25) + (a - b)), (pto.select(2.0 > 1.5, 2.0, 1.5) - pto.select(a <= 2.0, a, 2.0)), ((1.5 * 0.25) + (a - b))) * a)
        t1 = a
        if b >= t0:
            t1 = a
        t2 = ((-b) + b)
        t3 = pto.select(((-pto.select(t2 == t1, t2, t1)) + ((b * b) * (-a))) != pto.select(t2 < (-(1.5 + t1)), t2, (-(1.5 + t1))), ((-pto.select(t2 == t1, t2, t1)) + ((b * b) * (-a))), pto.select(t2 < (-(1.5 + t1)), t2, (-(1.5 + t1))))
        pto.store(o + i, t3)
