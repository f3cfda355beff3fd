import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(pto.select(b > (a * 1.5), b, (a * 1.5)) <= b, pto.select(b > (a * 1.5), b, (a * 1.5)), b) * ((pto.select(a <= -3.0, a, -3.0) + 0.25) * (pto.select(a <= a, a, a) + (b * b))))
        acc2 = t0
        for j in range(i % 4, 4):
            acc2 = acc2 + t0
        pto.store(o + i, acc2)
