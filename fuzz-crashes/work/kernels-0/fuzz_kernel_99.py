import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(((-b) ^ b) >= a, ((-b) ^ b), a) & (pto.select((100 - -7) == a, (100 - -7), a) | ((b * a) * pto.select(a != b, a, b))))
        t1 = (-100)
        acc2 = t1
        for j in range(i % 3, 3):
            acc2 = acc2 + t1
        pto.store(o + i, acc2)
