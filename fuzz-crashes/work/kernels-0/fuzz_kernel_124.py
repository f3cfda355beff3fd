import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (a | pto.select(((b ^ 1) + -7) <= (-3), ((b ^ 1) + -7), (-3)))
        t1 = 100
        t2 = (((a * pto.select(a < t1, a, t1)) * (t0 | a)) & (-a))
        t3 = pto.select((-(-t0)) > b, (-(-t0)), b)
        t4 = b
        if a < a:
            t4 = ((pto.select(t1 < (t0 + t1), t1, (t0 + t1)) * (-7 & (3 ^ -7))) - ((t3 - 1) | t0))
        t5 = (((-(t0 | b)) ^ t4) - a)
        acc2 = t5
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t5
        pto.store(o + i, acc2)
