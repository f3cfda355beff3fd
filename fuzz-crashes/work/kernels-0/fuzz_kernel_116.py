import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(a == (a ^ (100 * (-a))), a, (a ^ (100 * (-a))))
        acc2 = t0
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t0
        pto.store(o + i, acc2)
