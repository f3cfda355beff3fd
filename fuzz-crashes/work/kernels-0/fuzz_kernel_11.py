import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = -7
        t1 = (-((-(b * -7)) * ((a - 3) | (3 * -7))))
        acc = a
        for j in range(3):
            acc = acc + t1
        pto.store(o + i, acc)
