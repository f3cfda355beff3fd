import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((b + b) - (pto.select(a == pto.select(a <= b, a, b), a, pto.select(a <= b, a, b)) * (pto.select(b >= 1.5, b, 1.5) - b)))
        t1 = t0
        if a >= t0:
            t1 = pto.select(((pto.select(b <= t0, b, t0) + (2.0 + 1.5)) + (pto.select(1.5 == t0, 1.5, t0) * (-a))) <= pto.select((a + (-3.0 - a)) == t0, (a + (-3.0 - a)), t0), ((pto.select(b <= t0, b, t0) + (2.0 + 1.5)) + (pto.select(1.5 == t0, 1.5, t0) * (-a))), pto.select((a + (-3.0 - a)) == t0, (a + (-3.0 - a)), t0))
        t2 = ((t0 * (pto.select(t1 == 1.5, t1, 1.5) - (2.0 * a))) + a)
        t3 = b
        t4 = (-(t2 + (-(2.0 + t0))))
        pto.store(o + i, t4)
