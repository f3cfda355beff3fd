import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((b - ((a + a) - pto.select(a > a, a, a))) * pto.select((pto.select(0.25 <= b, 0.25, b) * a) != (-pto.select(a == a, a, a)), (pto.select(0.25 <= b, 0.25, b) * a), (-pto.select(a == a, a, a))))
        t1 = (-(-((-a) - (0.25 - a))))
        t2 = (-(-(-(a + 1.5))))
        t3 = a
        t4 = 1.5
        t5 = b
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
