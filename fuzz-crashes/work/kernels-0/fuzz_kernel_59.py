import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(pto.select((-1.5) < a, (-1.5), a) <= ((pto.select(0.25 >= a, 0.25, a) - (a * a)) - pto.select((1.5 + -3.0) == pto.select(a >= b, a, b), (1.5 + -3.0), pto.select(a >= b, a, b))), pto.select((-1.5) < a, (-1.5), a), ((pto.select(0.25 >= a, 0.25, a) - (a * a)) - pto.select((1.5 + -3.0) == pto.select(a >= b, a, b), (1.5 + -3.0), pto.select(a >= b, a, b))))
        t1 = 1.5
        t2 = t0
        if t1 < a:
            t2 = (t1 * (((b - 1.5) * a) - (a * pto.select(t1 == a, t1, a))))
        t3 = t0
        if a < a:
            t3 = (2.0 * (t1 * t1))
        pto.store(o + i, t3)
