import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((b - a) - a) - (b * a)) - a)
        t1 = ((((t0 - t0) - (t0 + 2.0)) - pto.select((2.0 - -3.0) <= (b + b), (2.0 - -3.0), (b + b))) - (-a))
        t2 = a
        if a >= t0:
            t2 = (2.0 - (((-t0) * (b - t1)) + ((-b) * pto.select(t1 <= t1, t1, t1))))
        t3 = ((-3.0 - b) * pto.select(b <= ((b - t2) + t2), b, ((b - t2) + t2)))
        t4 = (t3 + 0.25)
        acc2 = t4
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
