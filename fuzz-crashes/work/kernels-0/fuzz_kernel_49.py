import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(pto.select(b <= b, b, b) + b))
        t1 = pto.select((-((a * a) - (a + t0))) < a, (-((a * a) - (a + t0))), a)
        t2 = t0
        if t1 < t1:
            t2 = b
        t3 = pto.select((-t0) > pto.select((t0 + pto.select(t2 >= -3.0, t2, -3.0)) != t2, (t0 + pto.select(t2 >= -3.0, t2, -3.0)), t2), (-t0), pto.select((t0 + pto.select(t2 >= -3.0, t2, -3.0)) != t2, (t0 + pto.select(t2 >= -3.0, t2, -3.0)), t2))
        pto.store(o + i, t3)
