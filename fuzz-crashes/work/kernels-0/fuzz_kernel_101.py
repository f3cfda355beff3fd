import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-3.0 + (-2.0)) - pto.select((1.5 + 1.5) <= (pto.select(2.0 < a, 2.0, a) * (-b)), (1.5 + 1.5), (pto.select(2.0 < a, 2.0, a) * (-b))))
        t1 = a
        if t0 >= b:
            t1 = pto.select((0.25 * a) == t0, (0.25 * a), t0)
        t2 = (-b)
        t3 = ((-t2) - (-(-0.25)))
        t4 = t2
        if t2 < b:
            t4 = (((b + pto.select(b == t1, b, t1)) + b) + (t3 - pto.select((-2.0) <= (-t0), (-2.0), (-t0))))
        pto.store(o + i, t4)
