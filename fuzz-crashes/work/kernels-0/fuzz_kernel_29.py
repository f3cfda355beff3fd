import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (-(-pto.select((100 + a) <= 1, (100 + a), 1)))
        t2 = (-b)
        t3 = ((((--7) ^ (t1 + 1)) | ((a | t1) * (t2 * 3))) & (t0 | (-(t0 | t0))))
        acc2 = t3
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t3
        pto.store(o + i, acc2)
