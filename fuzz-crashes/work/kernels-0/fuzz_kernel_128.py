import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (0.25 + (b * (-(-3.0 - b))))
        t2 = pto.select(pto.select(((-1.5) - pto.select(2.0 == t0, 2.0, t0)) > ((0.25 - t1) * t1), ((-1.5) - pto.select(2.0 == t0, 2.0, t0)), ((0.25 - t1) * t1)) <= 1.5, pto.select(((-1.5) - pto.select(2.0 == t0, 2.0, t0)) > ((0.25 - t1) * t1), ((-1.5) - pto.select(2.0 == t0, 2.0, t0)), ((0.25 - t1) * t1)), 1.5)
        t3 = (pto.select(t0 >= 2.0, t0, 2.0) * ((pto.select(-3.0 == a, -3.0, a) * pto.select(a < a, a, a)) * (t2 - (a + 2.0))))
        t4 = (-(t0 - (t0 * pto.select(t2 == t0, t2, t0))))
        t5 = (2.0 * t1)
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
