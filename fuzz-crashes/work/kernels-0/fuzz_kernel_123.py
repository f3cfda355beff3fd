import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (a + a)
        t1 = (pto.select(((a ^ 1) * (-7 + a)) == ((t0 - -7) | (t0 ^ a)), ((a ^ 1) * (-7 + a)), ((t0 - -7) | (t0 ^ a))) * 3)
        t2 = b
        t3 = (pto.select(((b + t1) - b) < (-7 - t2), ((b + t1) - b), (-7 - t2)) & t0)
        t4 = a
        if t3 < t0:
            t4 = t1
        t5 = pto.select((((100 - 100) ^ t1) + 100) <= ((-(t3 * 3)) - t3), (((100 - 100) ^ t1) + 100), ((-(t3 * 3)) - t3))
        acc = a
        for j in range(3):
            acc = acc + t5
        while a < b:
            pass
        else:
            pass
        pto.store(o + i, acc)
