import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = (t0 - (a - ((b | a) | -7)))
        t2 = ((t1 * t1) & (((-3) - t0) * t1))
        t3 = t2
        if t0 < a:
            t3 = ((((t2 ^ b) & t2) | t1) ^ (pto.select((a * t0) <= a, (a * t0), a) ^ pto.select((-7 | -7) > (1 ^ a), (-7 | -7), (1 ^ a))))
        t4 = t1
        if t0 < b:
            t4 = t3
        t5 = (pto.select(((t0 ^ t3) & (3 ^ b)) != (-7 * 3), ((t0 ^ t3) & (3 ^ b)), (-7 * 3)) - t4)
        acc2 = t5
        for j in range(i % 3, 3):
            acc2 = acc2 + t5
        pto.store(o + i, acc2)
