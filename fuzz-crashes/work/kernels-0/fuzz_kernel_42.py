import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((a + (b * pto.select(a > b, a, b))) * ((a + (-3.0 - -3.0)) * (a * (-a))))
        pto.store(o + i, t0)
