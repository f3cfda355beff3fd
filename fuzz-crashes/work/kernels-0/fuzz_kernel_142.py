import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select((((a + a) * pto.select(b > b, b, b)) - (b + a)) != b, (((a + a) * pto.select(b > b, b, b)) - (b + a)), b)
        t1 = (pto.select((a + (-t0)) == (-3.0 + (-t0)), (a + (-t0)), (-3.0 + (-t0))) - (--3.0))
        t2 = (((a + 0.25) * ((t0 + b) - (b - a))) + ((2.0 + (-2.0)) * ((-b) - (t1 * b))))
        t3 = ((-a) + pto.select(((t1 * 0.25) * a) == pto.select(2.0 >= 1.5, 2.0, 1.5), ((t1 * 0.25) * a), pto.select(2.0 >= 1.5, 2.0, 1.5)))
        pto.store(o + i, t3)
