"""ResNet-18 and ResNet-50 as torchvision defines them (same layers, shapes and parameter counts:
11,689,512 and 25,557,032), the models of Horovod's pytorch_synthetic_benchmark.py, written here
because Debian's torch comes without torchvision."""
import torch.nn as nn


def _conv(cin, cout, k, stride=1):
    return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)


class _Basic(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        self.body = nn.Sequential(_conv(cin, width, 3, stride), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  _conv(width, width, 3), nn.BatchNorm2d(width))
        self.down = _shortcut(cin, width, stride)

    def forward(self, x):
        return (self.body(x) + (self.down(x) if self.down is not None else x)).relu_()


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        out = width * 4
        self.body = nn.Sequential(_conv(cin, width, 1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  _conv(width, width, 3, stride), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  _conv(width, out, 1), nn.BatchNorm2d(out))
        self.down = _shortcut(cin, out, stride)

    def forward(self, x):
        return (self.body(x) + (self.down(x) if self.down is not None else x)).relu_()


def _shortcut(cin, cout, stride):
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(_conv(cin, cout, 1, stride), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block, blocks, classes=1000):
        super().__init__()
        layers = [_conv(3, 64, 7, 2), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
            for b in range(n):
                layers.append(block(cin, width, 2 if b == 0 and stage > 0 else 1))
                cin = width * block.expansion
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


MODELS = {"resnet18": lambda: ResNet(_Basic, (2, 2, 2, 2)), "resnet50": lambda: ResNet(_Bottleneck, (3, 4, 6, 3))}
