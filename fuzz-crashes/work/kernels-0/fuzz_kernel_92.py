import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-(-b)) - b)
        t1 = ((2.0 - (--3.0)) + (1.5 + (t0 + (a * a))))
        t2 = (pto.select(-3.0 != ((1.5 * -3.0) + (a * t0)), -3.0, ((1.5 * -3.0) + (a * t0))) + b)
        t3 = b
        acc = a
        for j in range(3):
            acc = acc + t3
        pto.store(o + i, acc)
