import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = (-((a - a) - a))
        t2 = 2.0
        t3 = pto.select((t1 * (-(-b))) == pto.select(-3.0 != ((a + t0) * (t2 - a)), -3.0, ((a + t0) * (t2 - a))), (t1 * (-(-b))), pto.select(-3.0 != ((a + t0) * (t2 - a)), -3.0, ((a + t0) * (t2 - a))))
        t4 = (-t0)
        t5 = (((-pto.select(a != 2.0, a, 2.0)) + (-pto.select(t3 >= 2.0, t3, 2.0))) - t0)
        pto.store(o + i, t5)
