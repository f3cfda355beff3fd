import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (-(-(-b)))
        t2 = -3.0
        t3 = a
        if t0 >= t2:
            t3 = a
        acc2 = t3
        j = i % 4
        while True:
            if j >= 4:
                break
            j += 1
            acc2 = acc2 + t3
        pto.store(o + i, acc2)
