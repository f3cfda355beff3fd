import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (pto.select(pto.select((a * -3.0) <= t0, (a * -3.0), t0) > (pto.select(b >= b, b, b) - b), pto.select((a * -3.0) <= t0, (a * -3.0), t0), (pto.select(b >= b, b, b) - b)) * t0)
        t2 = (-(((1.5 + b) + (a + t1)) - ((-3.0 + 2.0) - (t1 - t0))))
        t3 = ((b + (-pto.select(t0 == t1, t0, t1))) * (((-a) + (-1.5)) + ((-3.0 + -3.0) - (t0 + b))))
        t4 = ((-((t3 + -3.0) - (1.5 * -3.0))) + (-3.0 + pto.select((-b) >= a, (-b), a)))
        acc = a
        for j in range(3):
            acc = acc + t4
        pto.store(o + i, acc)
