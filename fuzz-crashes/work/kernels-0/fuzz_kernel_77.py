import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((0.25 * 1.5) + (2.0 + -3.0)) + a) + (pto.select((a * 0.25) > pto.select(a <= 0.25, a, 0.25), (a * 0.25), pto.select(a <= 0.25, a, 0.25)) + ((-3.0 + 1.5) - b)))
        t1 = ((-pto.select((--3.0) <= pto.select(t0 == b, t0, b), (--3.0), pto.select(t0 == b, t0, b))) + (-((--3.0) - (t0 - 1.5))))
        t2 = b
        t3 = b
        if b < t1:
            t3 = t1
        t4 = -3.0
        acc = a
        for j in range(3):
            acc = acc + t4
        pto.store(o + i, acc)
