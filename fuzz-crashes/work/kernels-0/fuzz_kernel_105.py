import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (b * a)
        t1 = ((-((-a) - pto.select(a == t0, a, t0))) - t0)
        t2 = ((-(-0.25)) - -3.0)
        t3 = b
        if a < t1:
            t3 = ((t1 + (-(1.5 + b))) + (t2 - pto.select((-t1) == pto.select(-3.0 == a, -3.0, a), (-t1), pto.select(-3.0 == a, -3.0, a))))
        acc2 = t3
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t3
        pto.store(o + i, acc2)
