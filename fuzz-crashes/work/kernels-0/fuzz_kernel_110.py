import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-(-(b - 1.5))) + ((-(-a)) - ((b - a) * (-a))))
        t1 = ((pto.select((t0 + 0.25) >= (b + t0), (t0 + 0.25), (b + t0)) * (b + (-b))) + a)
        t2 = t1
        if a < b:
            t2 = ((-(-b)) * ((-t0) - (-3.0 - (t1 - -3.0))))
        t3 = ((-((1.5 * 2.0) + (-t0))) * 2.0)
        t4 = a
        if b < t3:
            t4 = -3.0
        acc2 = t4
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
