import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 3
        t1 = t0
        if b < b:
            t1 = (t0 - (t0 - ((a + b) - (-7 - t0))))
        t2 = t1
        t3 = (pto.select(t2 > (100 * (3 * t0)), t2, (100 * (3 * t0))) & b)
        t4 = a
        if t0 >= t1:
            t4 = t0
        acc2 = t4
        for j in range(i % 3, 3):
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
