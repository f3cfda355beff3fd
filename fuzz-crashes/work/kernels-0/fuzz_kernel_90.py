import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-a)
        t1 = b
        if t0 >= b:
            t1 = 2.0
        t2 = (pto.select(t1 == (2.0 - (t1 + 2.0)), t1, (2.0 - (t1 + 2.0))) + ((-3.0 - (0.25 * b)) * pto.select((-b) < 2.0, (-b), 2.0)))
        t3 = b
        if a >= t1:
            t3 = (1.5 - (2.0 - pto.select((t0 - t0) >= a, (t0 - t0), a)))
        pto.store(o + i, t3)
