import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 100
        t1 = a
        if a >= a:
            t1 = (pto.select((b | (t0 ^ t0)) == (-pto.select(100 >= a, 100, a)), (b | (t0 ^ t0)), (-pto.select(100 >= a, 100, a))) ^ (((a | -7) + (a + b)) - (100 & (t0 * t0))))
        t2 = (((-7 ^ (100 & 100)) & ((t0 ^ t1) & (-7 & b))) & pto.select(t1 != (t0 & (-b)), t1, (t0 & (-b))))
        t3 = (-7 ^ (((b & t2) ^ t0) - (b + (b + t2))))
        acc = a
        for j in range(3):
            acc = acc + t3
        pto.store(o + i, acc)
