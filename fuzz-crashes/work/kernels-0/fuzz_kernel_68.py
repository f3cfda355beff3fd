import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = pto.select((100 | (3 * a)) == (((t0 ^ t0) ^ (t0 - -7)) - (-100)), (100 | (3 * a)), (((t0 ^ t0) ^ (t0 - -7)) - (-100)))
        t2 = (-((t1 * pto.select(a != t0, a, t0)) - pto.select((-a) <= b, (-a), b)))
        acc2 = t2
        for j in range(i % 4, 4):
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
