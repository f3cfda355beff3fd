import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((3 | (a & a)) | ((a + a) + a)) * -7)
        t1 = pto.select(-7 > 1, -7, 1)
        t2 = ((a + b) | ((-(t1 - 3)) & (-1)))
        t3 = b
        if t2 >= t2:
            t3 = (((-(a | t2)) ^ b) | (-7 - 3))
        t4 = a
        t5 = 3
        acc2 = t5
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t5
        pto.store(o + i, acc2)
