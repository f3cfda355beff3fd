import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((a * (-b)) < ((b * 2.0) - (1.5 * a)), (a * (-b)), ((b * 2.0) - (1.5 * a))) - a)
        t1 = ((-((a + a) * (t0 + b))) - ((1.5 - t0) * pto.select(pto.select(t0 >= 0.25, t0, 0.25) > pto.select(b <= a, b, a), pto.select(t0 >= 0.25, t0, 0.25), pto.select(b <= a, b, a))))
        t2 = b
        acc = a
        for j in range(3):
            acc = acc + t2
        pto.store(o + i, acc)
