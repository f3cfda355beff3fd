import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((0.25 + (2.0 * pto.select(b < b, b, b))) - ((pto.select(a < b, a, b) - (b - 1.5)) * pto.select((b * b) != (a * a), (b * b), (a * a))))
        t1 = (1.5 + a)
        t2 = b
        if t1 >= a:
            t2 = (pto.select(((2.0 - 1.5) + t0) < (-(a + b)), ((2.0 - 1.5) + t0), (-(a + b))) + 0.25)
        t3 = ((-(-t1)) - t1)
        t4 = (t2 * (1.5 + pto.select(b == (a + 0.25), b, (a + 0.25))))
        t5 = pto.select((((-3.0 - -3.0) * pto.select(b < 2.0, b, 2.0)) + t3) < pto.select((-(0.25 * 2.0)) != pto.select(t2 >= (t1 - t2), t2, (t1 - t2)), (-(0.25 * 2.0)), pto.select(t2 >= (t1 - t2), t2, (t1 - t2))), (((-3.0 - -3.0) * pto.select(b < 2.0, b, 2.0)) + t3), pto.select((-(0.25 * 2.0)) != pto.select(t2 >= (t1 - t2), t2, (t1 - t2)), (-(0.25 * 2.0)), pto.select(t2 >= (t1 - t2), t2, (t1 - t2))))
        pto.store(o + i, t5)
