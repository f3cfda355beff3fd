import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select((b * ((-a) + pto.select(a == 1.5, a, 1.5))) > (((a * a) - pto.select(0.25 > b, 0.25, b)) - ((0.25 + 0.25) - (a * a))), (b * ((-a) + pto.select(a == 1.5, a, 1.5))), (((a * a) - pto.select(0.25 > b, 0.25, b)) - ((0.25 + 0.25) - (a * a))))
        t1 = t0
        if a < t0:
            t1 = pto.select(pto.select(pto.select((-a) < (a * t0), (-a), (a * t0)) > pto.select((t0 - a) < b, (t0 - a), b), pto.select((-a) < (a * t0), (-a), (a * t0)), pto.select((t0 - a) < b, (t0 - a), b)) < ((-1.5) * ((a - a) - b)), pto.select(pto.select((-a) < (a * t0), (-a), (a * t0)) > pto.select((t0 - a) < b, (t0 - a), b), pto.select((-a) < (a * t0), (-a), (a * t0)), pto.select((t0 - a) < b, (t0 - a), b)), ((-1.5) * ((a - a) - b)))
        t2 = ((pto.select((t0 - 2.0) > 1.5, (t0 - 2.0), 1.5) - pto.select((t0 + t0) >= t1, (t0 + t0), t1)) + 0.25)
        t3 = (pto.select((pto.select(t1 <= -3.0, t1, -3.0) * (-1.5)) > pto.select((-t1) != (t2 * 2.0), (-t1), (t2 * 2.0)), (pto.select(t1 <= -3.0, t1, -3.0) * (-1.5)), pto.select((-t1) != (t2 * 2.0), (-t1), (t2 * 2.0))) * (a + (-3.0 + (t0 - t2))))
        t4 = a
        if a >= t0:
            t4 = (0.25 * ((t1 * (t1 + t1)) + (t0 * (2.0 + t3))))
        t5 = t1
        acc2 = t5
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t5
        t99 = pto.load(a)
        pto.store(o + i, acc2)
