import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(pto.select((-(b * a)) < (b * b), (-(b * a)), (b * b)) < a, pto.select((-(b * a)) < (b * b), (-(b * a)), (b * b)), a)
        t1 = ((b * pto.select((a * t0) == (t0 * a), (a * t0), (t0 * a))) - (-((b * t0) * (a * a))))
        t2 = (b + (b + (2.0 * (t1 + 0.25))))
        t3 = t2
        t4 = (-(-(1.5 + t3)))
        pto.store(o + i, t4)
