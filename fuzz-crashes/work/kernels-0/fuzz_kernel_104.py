import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(pto.select((b * a) >= (b + a), (b * a), (b + a)) < (pto.select(b > -3.0, b, -3.0) - (a + b)), pto.select((b * a) >= (b + a), (b * a), (b + a)), (pto.select(b > -3.0, b, -3.0) - (a + b))) * 0.25)
        t1 = 2.0
        t2 = a
        pto.store(o + i, t2)
