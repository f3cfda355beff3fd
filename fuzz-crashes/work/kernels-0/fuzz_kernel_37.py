import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(pto.select((a * a) >= b, (a * a), b) + pto.select(-3.0 <= (b * b), -3.0, (b * b))))
        t1 = t0
        if b >= b:
            t1 = (-3.0 - 0.25)
        t2 = pto.select((-(-pto.select(0.25 >= b, 0.25, b))) > 1.5, (-(-pto.select(0.25 >= b, 0.25, b))), 1.5)
        acc2 = t2
        j = i % 2
        while True:
            if j >= 2:
                break
            j += 1
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
