import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((b | 3) & (a & b)) & a) * (a + 1))
        t1 = a
        if t0 < a:
            t1 = (b - (((-7 & -7) - pto.select(3 >= t0, 3, t0)) * a))
        t2 = ((pto.select((a ^ -7) <= t0, (a ^ -7), t0) * (-100)) + (a | (-pto.select(1 > 3, 1, 3))))
        t3 = (t2 | (t0 * t2))
        t4 = ((-((1 ^ t1) * (b * b))) * (t0 - (a ^ pto.select(t0 != a, t0, a))))
        t5 = t1
        if t4 < t1:
            t5 = a
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
