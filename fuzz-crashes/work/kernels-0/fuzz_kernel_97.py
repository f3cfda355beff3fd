import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(-3.0 > 2.0, -3.0, 2.0)
        t1 = pto.select((((a + a) * (b - t0)) - (-pto.select(2.0 == a, 2.0, a))) >= b, (((a + a) * (b - t0)) - (-pto.select(2.0 == a, 2.0, a))), b)
        t2 = a
        t3 = t2
        if t2 >= t0:
            t3 = pto.select(pto.select((0.25 - pto.select(1.5 == 2.0, 1.5, 2.0)) >= ((t0 * b) * (-t0)), (0.25 - pto.select(1.5 == 2.0, 1.5, 2.0)), ((t0 * b) * (-t0))) <= 2.0, pto.select((0.25 - pto.select(1.5 == 2.0, 1.5, 2.0)) >= ((t0 * b) * (-t0)), (0.25 - pto.select(1.5 == 2.0, 1.5, 2.0)), ((t0 * b) * (-t0))), 2.0)
        acc2 = t3
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t3
        pto.store(o + i, acc2)
