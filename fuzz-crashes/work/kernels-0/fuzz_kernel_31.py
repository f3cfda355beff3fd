import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 0.25
        acc2 = t0
        j = i % 5
        while True:
            if j >= 5:
                break
            j += 1
            acc2 = acc2 + t0
        pto.store(o + i, acc2)
