import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-pto.select(pto.select(a < (0.25 * b), a, (0.25 * b)) <= ((a * b) * (-a)), pto.select(a < (0.25 * b), a, (0.25 * b)), ((a * b) * (-a))))
        t1 = t0
        if a < t0:
            t1 = (-pto.select(((t0 * 1.5) + (1.5 - b)) > ((b * a) * (t0 * t0)), ((t0 * 1.5) + (1.5 - b)), ((b * a) * (t0 * t0))))
        t2 = pto.select(a != pto.select((-(b * t0)) != t0, (-(b * t0)), t0), a, pto.select((-(b * t0)) != t0, (-(b * t0)), t0))
        t3 = (-((0.25 + t0) + ((t2 - t2) * (t0 + a))))
        t4 = (b + b)
        t5 = 1.5
        pto.store(o + i, t5)
