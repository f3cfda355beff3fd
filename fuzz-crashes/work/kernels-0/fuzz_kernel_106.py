import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((((1 - a) ^ (1 - a)) - ((--7) | (-7 & 100))) - (((b ^ a) - -7) ^ (1 ^ (1 & a))))
        t1 = b
        t2 = b
        if t0 >= a:
            t2 = ((((b & t0) - (t1 ^ b)) + ((-7 * a) + (t1 ^ t0))) - (pto.select(b >= (3 * -7), b, (3 * -7)) & t1))
        t3 = (-(t1 + -7))
        t4 = ((t2 - a) ^ t1)
        acc2 = t4
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t4
        pto.store(o + i, acc2)
