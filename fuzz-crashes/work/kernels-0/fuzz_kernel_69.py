import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(((b - 1.5) + pto.select(2.0 != b, 2.0, b)) != a, ((b - 1.5) + pto.select(2.0 != b, 2.0, b)), a) * b)
        t1 = (-(-((t0 * 2.0) + (b + t0))))
        t2 = (t1 - t1)
        pto.store(o + i, t2)
