import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(a - (-pto.select(1.5 != b, 1.5, b))))
        t1 = (((pto.select(1.5 < b, 1.5, b) + b) + (a * (0.25 + a))) - b)
        t2 = (-pto.select(((t1 * t1) * pto.select(b == -3.0, b, -3.0)) >= (-1.5), ((t1 * t1) * pto.select(b == -3.0, b, -3.0)), (-1.5)))
        t3 = b
        if a < t2:
            t3 = pto.select(((-pto.select(t2 <= b, t2, b)) - (0.25 + 0.25)) > ((-(-a)) + pto.select((-a) != (2.0 + t1), (-a), (2.0 + t1))), ((-pto.select(t2 <= b, t2, b)) - (0.25 + 0.25)), ((-(-a)) + pto.select((-a) != (2.0 + t1), (-a), (2.0 + t1))))
        t4 = (-pto.select((b * pto.select(t0 != b, t0, b)) <= (b + (b + t3)), (b * pto.select(t0 != b, t0, b)), (b + (b + t3))))
        acc2 = t4
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
