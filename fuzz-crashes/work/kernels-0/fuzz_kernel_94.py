import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (b * pto.select(((b * 2.0) + pto.select(b < a, b, a)) > a, ((b * 2.0) + pto.select(b < a, b, a)), a))
        t1 = b
        t2 = pto.select(((pto.select(t0 == a, t0, a) * (t1 * a)) + ((b * b) * pto.select(t1 > -3.0, t1, -3.0))) != b, ((pto.select(t0 == a, t0, a) * (t1 * a)) + ((b * b) * pto.select(t1 > -3.0, t1, -3.0))), b)
        pto.store(o + i, t2)
