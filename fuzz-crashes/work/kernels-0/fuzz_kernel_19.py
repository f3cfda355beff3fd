import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = t0
        if b < b:
            t1 = ((((a + b) - (b ^ 3)) + 3) & ((pto.select(1 != 1, 1, 1) - (t0 | a)) * 1))
        t2 = t1
        if a < b:
            t2 = pto.select(((-(-7 ^ 3)) ^ (100 | (1 - t0))) > ((a * t0) * ((1 ^ t0) ^ (1 ^ b))), ((-(-7 ^ 3)) ^ (100 | (1 - t0))), ((a * t0) * ((1 ^ t0) ^ (1 ^ b))))
        t3 = t1
        if b < t1:
            t3 = ((pto.select(a <= (-7 * -7), a, (-7 * -7)) + (t2 + (t0 | 3))) + b)
        t4 = pto.select(b != t0, b, t0)
        acc2 = t4
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
