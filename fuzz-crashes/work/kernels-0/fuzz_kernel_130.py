import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = b
        if a >= t0:
            t1 = pto.select(a > (1 ^ (b ^ (t0 ^ t0))), a, (1 ^ (b ^ (t0 ^ t0))))
        t2 = (t0 & t0)
        acc2 = t2
        for j in range(i % 5, 5):
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
