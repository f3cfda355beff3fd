import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = ((-(b | (t0 - 3))) | (((a & 100) + (a | a)) - t0))
        t2 = t1
        if t0 < t1:
            t2 = (t0 & (((-7 & b) ^ (t0 + t0)) - ((b - b) | (a * a))))
        t3 = a
        if t1 >= t2:
            t3 = ((((-t2) + (t1 + 100)) & ((-100) | 3)) - 1)
        t4 = t0
        if t0 < t0:
            t4 = ((((t0 ^ b) * (1 & t0)) | pto.select(a == 3, a, 3)) & t1)
        acc = a
        for j in range(3):
            acc = acc + t4
        t99 = a @ b
        pto.store(o + i, acc)
