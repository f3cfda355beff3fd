import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = a
        if b < t0:
            t1 = pto.select(((-(-3.0 + a)) - ((-b) + -3.0)) != (-a), ((-(-3.0 + a)) - ((-b) + -3.0)), (-a))
        t2 = t1
        acc2 = t2
        for j in range(i % 3, 3):
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
