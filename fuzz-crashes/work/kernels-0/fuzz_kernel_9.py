import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((a - 2.0) - (a - 1.5)) - (pto.select(a >= 1.5, a, 1.5) - (b - a))) + 0.25)
        t1 = t0
        if t0 >= t0:
            t1 = (-t0)
        t2 = b
        if b >= t0:
            t2 = pto.select((((t1 * a) * (-0.25)) + pto.select(b == -3.0, b, -3.0)) <= (-pto.select((1.5 - -3.0) <= (t0 + 2.0), (1.5 - -3.0), (t0 + 2.0))), (((t1 * a) * (-0.25)) + pto.select(b == -3.0, b, -3.0)), (-pto.select((1.5 - -3.0) <= (t0 + 2.0), (1.5 - -3.0), (t0 + 2.0))))
        t3 = a
        if t0 >= t0:
            t3 = ((-2.0) * (t2 + 2.0))
        t4 = t2
        if t1 >= t0:
            t4 = (-pto.select((0.25 + (t3 - t1)) > pto.select((t0 - t2) <= (-a), (t0 - t2), (-a)), (0.25 + (t3 - t1)), pto.select((t0 - t2) <= (-a), (t0 - t2), (-a))))
        t5 = ((pto.select(pto.select(b <= t1, b, t1) != (t4 * t1), pto.select(b <= t1, b, t1), (t4 * t1)) - (t0 * (t3 - b))) * (-((-3.0 - b) - b)))
        acc2 = t5
        for j in range(i % 5, 5):
            acc2 = acc2 + t5
        t99 = a @ b
        pto.store(o + i, acc2)
