import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(pto.select((b & b) <= -7, (b & b), -7) != ((a - -7) | b), pto.select((b & b) <= -7, (b & b), -7), ((a - -7) | b)) ^ ((-pto.select(a <= a, a, a)) | (3 + (b ^ b))))
        t1 = (b & (((t0 | a) + (b * a)) ^ a))
        t2 = t1
        if t1 < t0:
            t2 = t1
        t3 = 3
        t4 = t0
        if t3 >= a:
            t4 = (((-a) - t2) & 3)
        acc = a
        for j in range(3):
            acc = acc + t4
        pto.store(o + i, acc)
