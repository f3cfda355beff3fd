import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((b * pto.select(a <= (b * b), a, (b * b))) + b)
        t1 = ((((--7) + (-7 - t0)) + 1) * (pto.select((-a) == (3 - 3), (-a), (3 - 3)) & b))
        t2 = (-a)
        t3 = ((t1 - t1) - t0)
        t4 = (((-pto.select(t0 < t2, t0, t2)) | ((t3 ^ t0) | (t3 * 100))) - (-7 & (-b)))
        t5 = t0
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
